defmodule MixDialyzer.Warnings do
  @moduledoc "One function per dialyzer warning kind; see EXPECTED.md."

  # no_return (and the call inside it fails)
  def no_local_return do
    :lists.reverse(:not_a_list)
  end

  # guard_fail
  def guard_never_succeeds(n) when is_integer(n) do
    case n do
      m when is_binary(m) -> :never
      _ -> :ok
    end
  end

  # call: a wrong type passed to a local function
  def wrong_local_call do
    double(:not_a_number)
  end

  @spec double(integer()) :: integer()
  def double(x) when is_integer(x), do: x * 2

  # pattern_match
  def pattern_never_matches do
    case answer() do
      {:error, reason} -> reason
      n -> n
    end
  end

  defp answer, do: 42
end
