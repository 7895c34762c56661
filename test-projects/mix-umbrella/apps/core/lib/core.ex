defmodule Core do
  @moduledoc "Arithmetic shared by the umbrella's apps."

  @doc """
  Adds two numbers.

      iex> Core.add(1, 2)
      3
  """
  def add(a, b), do: a + b
end
