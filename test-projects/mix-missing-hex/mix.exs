defmodule MixMissingHex.MixProject do
  use Mix.Project

  def project do
    [
      app: :mix_missing_hex,
      version: "0.1.0",
      elixir: "~> 1.14",
      deps: [{:jason, "~> 1.4"}]
    ]
  end

  def application do
    [extra_applications: [:logger]]
  end
end
