defmodule MixDocsDeps.MixProject do
  use Mix.Project

  def project do
    [app: :mix_docs_deps, version: "0.2.0", elixir: "~> 1.14", deps: deps()]
  end

  def application, do: [extra_applications: [:logger]]

  defp deps do
    [{:tiny_json, "~> 0.3"}]
  end
end
