# Prints one JSON object per line for every documented module, function, macro, type and
# callback in the .beam files of the ebin directories given as arguments. Run with
# `elixir -e <this file> -- EBIN_DIR...`. Reads beams without loading them (Code.fetch_docs
# on the path; the source path from the beam's compile info).
defmodule DrydockFetchDocs do
  @moduledoc false

  def main(dirs) do
    for dir <- dirs do
      {app, vsn} = app_info(dir)

      for beam <- Enum.sort(Path.wildcard(Path.join(dir, "*.beam"))) do
        emit_module(beam, app, vsn)
      end
    end
  end

  defp app_info(dir) do
    case Path.wildcard(Path.join(dir, "*.app")) do
      [app_file | _] ->
        case :file.consult(String.to_charlist(app_file)) do
          {:ok, [{:application, app, props}]} -> {to_string(app), props[:vsn] && to_string(props[:vsn])}
          _ -> {Path.basename(app_file, ".app"), nil}
        end

      [] ->
        {nil, nil}
    end
  end

  defp emit_module(beam, app, vsn) do
    case Code.fetch_docs(beam) do
      {:docs_v1, anno, _lang, _format, module_doc, _meta, docs} ->
        module = beam |> Path.basename(".beam") |> String.to_atom() |> inspect()
        source = source(beam)
        base = %{app: app, vsn: vsn, module: module, source: source}

        if text = doc_text(module_doc) do
          emit(Map.merge(base, %{kind: "module", line: line(anno), doc: text}))
        end

        for {{kind, name, arity}, anno, signature, doc, meta} <- docs, text = doc_text(doc) do
          emit(
            Map.merge(base, %{
              kind: to_string(kind),
              name: to_string(name),
              arity: arity,
              signature: signature,
              line: line(anno),
              doc: text,
              deprecated: meta[:deprecated]
            })
          )
        end

      _ ->
        :ok
    end
  end

  defp doc_text(%{"en" => text}) when is_binary(text), do: text
  defp doc_text(_), do: nil

  defp line(anno) do
    case :erl_anno.line(anno) do
      n when is_integer(n) -> n
      _ -> nil
    end
  rescue
    _ -> nil
  end

  defp source(beam) do
    with {:ok, {_, [compile_info: info]}} <- :beam_lib.chunks(String.to_charlist(beam), [:compile_info]),
         source when source != nil <- info[:source] do
      to_string(source)
    else
      _ -> nil
    end
  end

  defp emit(map), do: IO.puts(DrydockJSON.encode(map))
end

DrydockFetchDocs.main(System.argv())
