defmodule MixMissingDeps.MixProject do
  use Mix.Project

  def project do
    [
      app: :mix_missing_deps,
      version: "0.1.0",
      elixir: "~> 1.14",
      deps: [
        {:jason, git: "https://github.com/michalmuskala/jason.git", tag: "v1.4.1"},
        {:shared, path: "../shared_lib_that_does_not_exist"}
      ]
    ]
  end

  def application do
    [extra_applications: [:logger]]
  end
end
