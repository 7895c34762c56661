defmodule MixWarnings.BrokenTest do
  use ExUnit.Case

  test "calls a helper that does not exist" do
    assert build_fixture(:user) == :ok
  end
end
