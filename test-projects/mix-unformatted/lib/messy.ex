defmodule MixUnformatted.Messy do
  def add(a,b), do: a+b
  def  greet( name ) do
      "hello " <> name
  end
end
