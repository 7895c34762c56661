defmodule CoreTest do
  use ExUnit.Case
  doctest Core

  test "adds" do
    assert Core.add(2, 2) == 4
  end
end
