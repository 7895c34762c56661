defmodule MixMissingDeps do
  @moduledoc "Needs Jason, which is never fetched."

  def encode(term), do: Jason.encode!(term)
end
