defmodule MixErrors do
  @moduledoc "Compiles, with warnings."

  alias MixErrors.Report

  def total(items) do
    count = length(items)
    Enum.sum(items)
  end
end
