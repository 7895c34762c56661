defmodule HistoryElixir.Cart do
  @moduledoc "Quantities by item name, priced with a price list."

  alias HistoryElixir.{Item, Pricing}

  defstruct lines: %{}

  def new, do: %__MODULE__{}

  def add(%__MODULE__{lines: lines} = cart, name, qty)
      when is_binary(name) and is_integer(qty) and qty > 0 do
    %{cart | lines: Map.update(lines, name, qty, &(&1 + qty))}
  end

  def from_items(items) do
    Enum.reduce(items, new(), fn %Item{name: name, qty: qty}, cart -> add(cart, name, qty) end)
  end

  def quantity(%__MODULE__{lines: lines}, name), do: Map.get(lines, name, 0)

  @doc "The cart's value; items missing from `prices` count as free."
  def total(%__MODULE__{lines: lines}, prices) do
    Enum.reduce(lines, 0, fn {name, qty}, sum -> sum + qty * Map.get(prices, name, 0) end)
  end

  @doc "One line per item, sorted by name, then the total after `discount` percent off."
  def receipt(%__MODULE__{lines: lines} = cart, prices, discount \\ 0) do
    item_lines =
      lines
      |> Enum.sort()
      |> Enum.map(fn {name, qty} ->
        price = Map.get(prices, name, 0)
        String.pad_trailing(name, 8) <> "#{qty} x #{Pricing.format_price(price)}"
      end)

    total = Pricing.discount(total(cart, prices), discount)
    Enum.join(item_lines ++ ["total: #{Pricing.format_price(total)}"], "\n")
  end
end
