defmodule MixErrors.Format do
  @moduledoc "Compiles, with warnings."

  import String, only: [upcase: 1]

  def title(text, width) do
    String.pad_trailing(text, 20)
  end
end
