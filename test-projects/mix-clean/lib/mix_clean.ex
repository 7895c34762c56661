defmodule MixClean do
  @moduledoc "Small arithmetic and greetings, with doctests."

  @doc """
  Adds two numbers.

      iex> MixClean.add(2, 3)
      5
  """
  def add(a, b), do: a + b

  @doc "Greets someone."
  def greet(name), do: "hello, #{name}"
end
