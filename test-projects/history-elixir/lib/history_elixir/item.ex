defmodule HistoryElixir.Item do
  @moduledoc "One line of a stock file: a name, a quantity and a unit price in cents."

  @enforce_keys [:name, :qty, :price_cents]
  defstruct [:name, :qty, :price_cents]

  @type t :: %__MODULE__{name: String.t(), qty: pos_integer(), price_cents: non_neg_integer()}

  def new(name, qty, price_cents)
      when is_binary(name) and is_integer(qty) and qty > 0 and is_integer(price_cents) do
    %__MODULE__{name: name, qty: qty, price_cents: price_cents}
  end

  @doc "The value of the whole line, in cents."
  def value(%__MODULE__{qty: qty, price_cents: price_cents}), do: qty * price_cents
end
