defmodule OddPaths.Modulo do
  @moduledoc "Ünïcödé in a file name with spaces."

  def saludo(nombre, año_sin_uso) do
    "¡hola, #{nombre}!"
  end
end
