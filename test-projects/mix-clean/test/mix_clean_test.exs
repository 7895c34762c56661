defmodule MixCleanTest do
  use ExUnit.Case, async: true
  doctest MixClean

  test "adds numbers" do
    assert MixClean.add(1, 2) == 3
  end

  test "greets" do
    assert MixClean.greet("world") == "hello, world"
  end

  @tag :skip
  test "not ready yet" do
    flunk("skipped tests do not run")
  end

  @tag :slow
  test "slow sum" do
    assert Enum.sum(1..1000) == 500_500
  end
end
