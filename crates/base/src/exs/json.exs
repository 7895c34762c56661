# JSON for drydock's Elixir scripts (Elixir 1.14 has no JSON module; 1.18 does). Prepended to
# each script that needs it.
defmodule DrydockJSON do
  @moduledoc false

  def encode(nil), do: "null"
  def encode(true), do: "true"
  def encode(false), do: "false"
  def encode(n) when is_integer(n) or is_float(n), do: to_string(n)
  def encode(atom) when is_atom(atom), do: encode(Atom.to_string(atom))

  def encode(string) when is_binary(string) do
    string = if String.valid?(string), do: string, else: inspect(string)
    [?", escape(string), ?"]
  end

  def encode(list) when is_list(list), do: [?[, Enum.map_intersperse(list, ?,, &encode/1), ?]]

  def encode(map) when is_map(map) do
    pairs = Enum.map_intersperse(map, ?,, fn {k, v} -> [encode(to_string(k)), ?:, encode(v)] end)
    [?{, pairs, ?}]
  end

  def encode(other), do: encode(inspect(other))

  defp escape(string) do
    for <<char::utf8 <- string>> do
      case char do
        ?" -> "\\\""
        ?\\ -> "\\\\"
        ?\n -> "\\n"
        ?\r -> "\\r"
        ?\t -> "\\t"
        c when c < 0x20 -> :io_lib.format("\\u~4.16.0B", [c])
        c -> <<c::utf8>>
      end
    end
  end
end
