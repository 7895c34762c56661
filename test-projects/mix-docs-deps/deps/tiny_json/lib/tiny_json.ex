defmodule TinyJson do
  @moduledoc """
  Encodes maps with string keys and string values as compact JSON objects.
  """

  @doc """
  Encodes `map` as a JSON object, keys sorted so the output is stable between runs.

      iex> TinyJson.encode(%{"b" => "2", "a" => "1"})
      ~s({"a":"1","b":"2"})
  """
  def encode(map) when is_map(map) do
    body =
      map
      |> Enum.sort()
      |> Enum.map_join(",", fn {k, v} -> string(k) <> ":" <> string(v) end)

    "{" <> body <> "}"
  end

  defp string(s), do: "\"" <> String.replace(s, ~r/["\\]/, "\\\\\\0") <> "\""
end
