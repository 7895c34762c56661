defmodule MixFailingTest do
  use ExUnit.Case
  doctest MixFailing

  test "passes" do
    assert MixFailing.times_ten(1) == 10
  end

  test "compares numbers" do
    assert MixFailing.times_ten(45) == 500
  end

  test "compares maps" do
    assert %{name: "drydock", version: 1} == %{name: "drydock", version: 2}
  end

  test "compares with a message" do
    assert MixFailing.halve(9) == 5, "halving 9 should round up"
  end

  test "raises" do
    MixFailing.parse!("forty-two")
  end

  test "prints then fails" do
    IO.puts("first line of output")
    IO.puts("second line of output")
    assert MixFailing.halve(20) > 100
  end

  test "multi-line message" do
    flunk("""
    first line of the reason
    second line of the reason\
    """)
  end

  test "compares long lists, ünïcode" do
    expected = Enum.map(1..30, &"item number #{&1}")
    assert Enum.map(1..30, &"item number #{&1 * 2}") == expected
  end

  @tag :skip
  test "skipped" do
    flunk("never runs")
  end

  @tag :slow
  test "slow and failing" do
    assert Enum.sum(1..10) == 0
  end
end
