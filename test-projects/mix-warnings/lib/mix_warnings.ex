defmodule MixWarnings do
  @moduledoc "Compiles with warnings only."

  alias MixWarnings.Storage

  @retries 3

  def fetch(key, opts) do
    MixWarnings.Cache.lookup(key)
  end

  def store(key, value) do
    MixWarnings.Cache.put(key, value)
  end

  def peek(key) do
    MixWarnings.Cache.lookup(key, :default)
  end

  def check(value) when is_binary(value) and is_integer(value), do: value

  def tally(kind, n \\ 1)
  def tally(:one, n), do: n
  def tally(_, n), do: n * 2

  def label(kind, suffix \\ "") when is_atom(kind), do: "#{kind}#{suffix}"
  def label(kind, suffix), do: "#{kind}#{suffix}"
end
