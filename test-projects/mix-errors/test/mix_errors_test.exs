defmodule MixErrorsTest do
  use ExUnit.Case

  test "total" do
    assert MixErrors.total([1, 2]) == 3
  end
end
