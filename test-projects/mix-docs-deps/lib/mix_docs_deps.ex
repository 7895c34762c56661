defmodule MixDocsDeps do
  @moduledoc """
  Greeting cards rendered as JSON for the docs index tests.
  """

  @doc """
  Builds the JSON text of a greeting card addressed to `name`, signed by the sender.

      iex> MixDocsDeps.card("Ada")
      ~s({"to":"Ada","from":"drydock"})
  """
  def card(name), do: TinyJson.encode(%{"to" => name, "from" => "drydock"})
end
