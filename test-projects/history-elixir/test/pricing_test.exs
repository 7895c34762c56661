defmodule HistoryElixir.PricingTest do
  use ExUnit.Case, async: true

  alias HistoryElixir.Pricing

  test "formats prices" do
    assert Pricing.format_price(1205) == "12.05"
    assert Pricing.format_price(7) == "0.07"
    assert Pricing.format_price(300) == "3.00"
  end

  test "discounts" do
    assert Pricing.discount(1000, 15) == 850
    assert Pricing.discount(999, 10) == 900
    assert Pricing.discount(500, 0) == 500
  end

  test "adds tax" do
    assert Pricing.with_tax(1000, 20) == 1200
    assert Pricing.with_tax(999, 7) == 1069
    assert Pricing.with_tax(999, 0) == 999
  end
end
