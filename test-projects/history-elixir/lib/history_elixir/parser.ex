defmodule HistoryElixir.Parser do
  @moduledoc "Parses `name,qty,price_cents` lines into items."

  alias HistoryElixir.Item

  def parse_line(line) do
    case String.split(String.trim(line), ",") do
      [name, qty_text, price_text] when name != "" -> build(name, qty_text, price_text)
      _ -> {:error, :bad_format}
    end
  end

  defp build(name, qty_text, price_text) do
    with {qty, ""} <- Integer.parse(qty_text),
         {price, ""} <- Integer.parse(price_text),
         true <- qty > 0 do
      {:ok, Item.new(name, qty, price)}
    else
      _ -> {:error, :bad_number}
    end
  end

  @doc "Parses every line that is neither blank nor a `#` comment."
  def parse_all(text) do
    text
    |> String.split("\n")
    |> Enum.reject(&skip?/1)
    |> Enum.reduce_while({:ok, []}, fn line, {:ok, items} ->
      case parse_line(line) do
        {:ok, item} -> {:cont, {:ok, [item | items]}}
        {:error, reason} -> {:halt, {:error, {reason, line}}}
      end
    end)
    |> case do
      {:ok, items} -> {:ok, Enum.reverse(items)}
      error -> error
    end
  end

  defp skip?(line) do
    trimmed = String.trim(line)
    trimmed == "" or String.starts_with?(trimmed, "#")
  end
end
