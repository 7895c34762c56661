defmodule HistoryElixir.Pricing do
  @moduledoc "Money in integer cents."

  @doc "`1205` as `\"12.05\"`."
  def format_price(cents) when is_integer(cents) and cents >= 0 do
    euros = div(cents, 100)
    rest = cents |> rem(100) |> Integer.to_string() |> String.pad_leading(2, "0")
    "#{euros}.#{rest}"
  end

  @doc "`total` less `percent` percent, rounded down to the cent."
  def discount(total, percent) when is_integer(total) and percent in 0..100 do
    total - div(total * percent, 100)
  end

  @doc "`cents` plus `rate_percent` percent tax, rounded to the nearest cent."
  def with_tax(cents, rate_percent) do
    if rate_percent == 0 do
      cents
    else
      cents + div(cents * rate_percent + 50, 100)
    end
  end
end
