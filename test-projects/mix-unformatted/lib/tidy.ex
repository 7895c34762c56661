defmodule MixUnformatted.Tidy do
  @moduledoc "Already formatted."

  def double(n), do: n * 2
end
