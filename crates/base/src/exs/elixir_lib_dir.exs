# Prints the Elixir version and the directory of its `elixir` application, for the docs
# of the standard library.
IO.puts(System.version())
IO.puts(:code.lib_dir(:elixir))
