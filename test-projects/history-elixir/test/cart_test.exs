defmodule HistoryElixir.CartTest do
  use ExUnit.Case, async: true

  alias HistoryElixir.{Cart, Item}

  @prices %{"bolt" => 25, "nut" => 10}

  defp cart do
    Cart.new() |> Cart.add("bolt", 4) |> Cart.add("nut", 3) |> Cart.add("bolt", 1)
  end

  test "adds up quantities" do
    assert Cart.quantity(cart(), "bolt") == 5
    assert Cart.quantity(cart(), "nut") == 3
  end

  test "unknown items have quantity 0" do
    assert Cart.quantity(cart(), "washer") == 0
  end

  test "totals a cart" do
    assert Cart.total(cart(), @prices) == 155
  end

  test "items without a price are free" do
    assert Cart.total(Cart.add(cart(), "washer", 2), @prices) == 155
  end

  test "builds a cart from items" do
    cart = Cart.from_items([Item.new("bolt", 2, 25), Item.new("bolt", 1, 25)])
    assert Cart.quantity(cart, "bolt") == 3
  end

  test "prints a receipt" do
    assert Cart.receipt(cart(), @prices, 10) ==
             "bolt    5 x 0.25\nnut     3 x 0.10\ntotal: 1.40"
  end
end
