defmodule MixClean.ShapesTest do
  use ExUnit.Case, async: true

  alias MixClean.Shapes

  test "square" do
    assert Shapes.area({:square, 3}) == 9
  end

  test "rectangle" do
    assert Shapes.area({:rectangle, 2, 5}) == 10
  end
end
