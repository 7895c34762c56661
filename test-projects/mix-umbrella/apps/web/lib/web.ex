defmodule Web do
  @moduledoc "Renders results computed by Core."

  def render(a, b), do: "#{a} + #{b} = #{Core.add(a, b)}"
end
