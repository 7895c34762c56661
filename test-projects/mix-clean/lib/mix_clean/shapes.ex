defmodule MixClean.Shapes do
  @moduledoc "Areas of simple shapes."

  def area({:square, side}), do: side * side
  def area({:rectangle, width, height}), do: width * height
end
