# drydock's ExUnit formatter: one JSON event per line on stdout, each line starting with
# the marker below, so the server gets exact results instead of parsing ExUnit's text.
# Loaded with `elixir -e <this file> -S mix test --formatter DrydockExUnitFormatter`, it never
# touches the project. Written for Elixir 1.14 and later; DrydockJSON (json.exs) is prepended.
defmodule DrydockExUnitFormatter do
  @moduledoc false
  use GenServer

  @marker "\u001eDRYDOCK-EXUNIT "
  @stacktrace_frames 20

  @impl true
  def init(_opts), do: {:ok, %{}}

  @impl true
  def handle_cast({:suite_started, opts}, state) do
    emit(%{event: "suite_started", seed: opts[:seed]})
    {:noreply, state}
  end

  def handle_cast({:suite_finished, times}, state) do
    emit(%{event: "suite_finished", run_us: run_time(times)})
    {:noreply, state}
  end

  def handle_cast({:test_finished, test}, state) do
    emit(test_event(test))
    {:noreply, state}
  end

  def handle_cast({:module_finished, %{state: {:failed, failures}} = module}, state) do
    emit(%{
      event: "module_failed",
      module: inspect(module.name),
      file: absolute(module.file),
      failures: Enum.map(failures, &failure(&1, module.file))
    })

    {:noreply, state}
  end

  def handle_cast(:max_failures_reached, state) do
    emit(%{event: "max_failures_reached"})
    {:noreply, state}
  end

  def handle_cast(_event, state), do: {:noreply, state}

  defp run_time(%{run: run}), do: run
  defp run_time(run) when is_integer(run), do: run
  defp run_time(_), do: nil

  defp test_event(test) do
    {outcome, failures} = outcome(test.state)

    %{
      event: "test",
      name: to_string(test.name),
      module: inspect(test.module),
      file: absolute(test.tags[:file]),
      line: test.tags[:line],
      outcome: outcome,
      time_us: test.time,
      failures: Enum.map(failures, &failure(&1, test.tags[:file]))
    }
  end

  defp outcome(nil), do: {"passed", []}
  defp outcome({:failed, failures}), do: {"failed", failures}
  defp outcome({:skipped, _}), do: {"skipped", []}
  defp outcome({:excluded, _}), do: {"excluded", []}
  defp outcome({:invalid, _}), do: {"invalid", []}

  defp failure({kind, reason, stack}, test_file) do
    {file, line} = location(stack, test_file)

    Map.merge(
      %{
        file: file,
        line: line,
        stacktrace: format_stacktrace(stack)
      },
      describe(kind, reason, stack)
    )
  end

  defp describe(:error, %ExUnit.AssertionError{} = error, _stack) do
    %{
      message: error.message,
      code: code(error.expr),
      left: value(error.left),
      right: value(error.right)
    }
  end

  defp describe(kind, reason, stack) do
    %{message: Exception.format_banner(kind, reason, stack)}
  end

  defp code(expr) do
    if no_value?(expr), do: nil, else: Macro.to_string(expr)
  end

  defp value(term) do
    if no_value?(term), do: nil, else: inspect(term, pretty: true, width: 80, limit: 50)
  end

  defp no_value?(term), do: term == :ex_unit_no_meaningful_value

  # Where in the test file the failure happened; else the first frame in a project file
  # (frames of Elixir's own modules carry paths relative to Elixir's source tree).
  defp location(stack, test_file) do
    frames =
      for {_, _, _, info} <- stack,
          info[:file],
          file = absolute(info[:file]),
          File.regular?(file),
          do: {file, info[:line]}

    test_file = test_file && absolute(test_file)
    Enum.find(frames, fn {file, _} -> file == test_file end) || List.first(frames) || {nil, nil}
  end

  defp format_stacktrace([]), do: nil

  defp format_stacktrace(stack) do
    stack |> Enum.take(@stacktrace_frames) |> Exception.format_stacktrace()
  end

  # Absolute, because an umbrella runs each app's tests in the app's own directory.
  defp absolute(nil), do: nil
  defp absolute(path), do: Path.expand(to_string(path))

  defp emit(event), do: IO.puts([@marker, DrydockJSON.encode(event)])
end
