defmodule MixWarnings.Cache do
  @moduledoc "A cache that only knows how to look things up."

  def lookup(key), do: {:miss, key}

  def warm do
    MixWarnings.Missing.load()
  end

  def refresh do
    MixWarnings.Missing.load()
  end
end
