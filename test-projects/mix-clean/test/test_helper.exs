ExUnit.start(exclude: [:slow])
