defmodule WebTest do
  use ExUnit.Case

  test "renders a sum" do
    assert Web.render(1, 2) == "1 + 2 = 3"
  end

  test "renders a negative sum" do
    assert Web.render(-1, -2) == "-1 + -2 = -3"
  end
end
