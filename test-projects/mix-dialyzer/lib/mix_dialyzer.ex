defmodule MixDialyzer do
  @moduledoc "Clean code: dialyzer finds nothing here."

  @spec greet(String.t()) :: String.t()
  def greet(name), do: "hello " <> name
end
