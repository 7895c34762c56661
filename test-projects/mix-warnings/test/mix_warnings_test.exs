defmodule MixWarningsTest do
  use ExUnit.Case

  test "fetch misses" do
    assert MixWarnings.fetch(:a, []) == {:miss, :a}
  end
end
