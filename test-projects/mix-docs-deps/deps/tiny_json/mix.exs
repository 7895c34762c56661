defmodule TinyJson.MixProject do
  use Mix.Project

  def project do
    [app: :tiny_json, version: "0.3.1", elixir: "~> 1.14", deps: []]
  end
end
