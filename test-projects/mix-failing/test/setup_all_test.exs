defmodule MixFailing.SetupAllTest do
  use ExUnit.Case

  setup_all do
    raise "database unavailable"
  end

  test "first needs the database" do
    assert true
  end

  test "second needs the database" do
    assert true
  end
end
