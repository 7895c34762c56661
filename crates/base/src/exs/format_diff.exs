# For each file named on stdin (one per line), prints the marker, the file, and the file as
# `mix format` would write it (Base16, so any content survives the line protocol). Uses the
# project's .formatter.exs through Mix, and writes nothing.
Mix.start()
Code.compile_file("mix.exs")

for file <- String.split(IO.read(:stdio, :eof), "\n", trim: true) do
  try do
    {formatter, _opts} = Mix.Tasks.Format.formatter_for_file(file)
    IO.puts(["\u001eDRYDOCK-FORMAT ", file, " ", Base.encode16(formatter.(File.read!(file)))])
  rescue
    error -> IO.puts(:stderr, "#{file}: #{Exception.message(error)}")
  end
end
