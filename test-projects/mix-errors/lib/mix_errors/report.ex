defmodule MixErrors.Report do
  @moduledoc "Fails to compile: it calls a function that does not exist."

  # Compile-time dependencies: this file waits until the other two have compiled, so
  # their warnings are always printed before this file's error.
  require MixErrors
  require MixErrors.Format

  def header(title) do
    unused_width = 80
    MixErrors.Format.title(title, 10)
  end

  def render(rows) do
    rows
    |> Enum.map(&format_row/1)
    |> Enum.join("\n")
  end
end
