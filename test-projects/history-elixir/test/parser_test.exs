defmodule HistoryElixir.ParserTest do
  use ExUnit.Case, async: true

  alias HistoryElixir.{Item, Parser}

  test "parses a line" do
    {:ok, item} = Parser.parse_line("bolt,3,10")
    assert item == %Item{name: "bolt", qty: 3, price_cents: 10}
  end

  test "rejects bad lines" do
    assert Parser.parse_line("bolt,3") == {:error, :bad_format}
    assert Parser.parse_line(",3,4") == {:error, :bad_format}
    assert Parser.parse_line("bolt,three,10") == {:error, :bad_number}
    assert Parser.parse_line("bolt,0,10") == {:error, :bad_number}
  end

  test "parses a stock file, skipping comments and blank lines" do
    {:ok, items} = Parser.parse_all("# name,qty,price\nbolt,3,10\n\nnut,4,5\n")
    assert Enum.map(items, & &1.name) == ["bolt", "nut"]
  end

  test "names the line that failed" do
    assert Parser.parse_all("bolt,3,10\nnut,x,5") == {:error, {:bad_number, "nut,x,5"}}
  end
end
