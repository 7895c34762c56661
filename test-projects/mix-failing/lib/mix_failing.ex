defmodule MixFailing do
  @moduledoc "Functions with known bugs, so that tests fail."

  @doc """
  Multiplies by ten (correctly).

      iex> MixFailing.times_ten(45)
      450
  """
  def times_ten(n), do: n * 10

  @doc """
  Halves a number, rounding down (the doctest expects rounding up).

      iex> MixFailing.halve(9)
      5
  """
  def halve(n), do: div(n, 2)

  def parse!(text) do
    case Integer.parse(text) do
      {number, ""} -> number
      _ -> raise ArgumentError, "not a number: #{inspect(text)}"
    end
  end
end
