# Prints what drydock's project_info needs of a mix project as one JSON object on stdout.
# Run with `elixir -e <this file>` in the project directory: it reads mix.exs and mix.lock
# through Mix itself, without loading or compiling dependencies (which may be missing).
defmodule DrydockProjectInfo do
  @moduledoc false

  def main do
    Mix.start()
    Code.compile_file("mix.exs")
    lock = read_lock()

    apps =
      if Mix.Project.umbrella?() do
        for {app, path} <- Enum.sort(Mix.Project.apps_paths()) do
          Mix.Project.in_project(app, path, fn _ -> app_info(path, lock) end)
        end
      else
        [app_info(".", lock)]
      end

    root = Mix.Project.config()

    IO.puts(
      DrydockJSON.encode(%{
        app: root[:app] && to_string(root[:app]),
        version: root[:version],
        elixir_requirement: root[:elixir],
        umbrella: Mix.Project.umbrella?(),
        elixir_version: System.version(),
        otp_release: to_string(:erlang.system_info(:otp_release)),
        otp_version: otp_version(),
        apps: apps
      })
    )
  end

  # mix.lock lives at the umbrella root (`lockfile` config); children share it.
  defp read_lock do
    lockfile = Mix.Project.config()[:lockfile] || "mix.lock"

    with {:ok, text} <- File.read(lockfile),
         {lock, _} <- Code.eval_string(text, [], file: lockfile) do
      lock
    else
      _ -> %{}
    end
  end

  defp app_info(path, lock) do
    config = Mix.Project.config()

    %{
      app: config[:app] && to_string(config[:app]),
      version: config[:version],
      elixir_requirement: config[:elixir],
      path: path,
      elixirc_paths: Enum.map(config[:elixirc_paths] || ["lib"], &to_string/1),
      test_paths: Enum.map(config[:test_paths] || ["test"], &to_string/1),
      escript: config[:escript] != nil,
      deps: Enum.map(config[:deps] || [], &dep(&1, lock))
    }
  end

  defp dep({name, requirement}, lock) when is_binary(requirement), do: dep(name, requirement, [], lock)
  defp dep({name, opts}, lock) when is_list(opts), do: dep(name, nil, opts, lock)
  defp dep({name, requirement, opts}, lock), do: dep(name, requirement, opts, lock)

  defp dep(name, requirement, opts, lock) do
    %{
      name: to_string(name),
      requirement: requirement,
      source: source(opts),
      only: opts[:only] && opts[:only] |> List.wrap() |> Enum.map(&to_string/1),
      optional: opts[:optional] == true,
      runtime: opts[:runtime] != false,
      locked: locked(lock[name])
    }
  end

  defp source(opts) do
    cond do
      opts[:in_umbrella] -> "in_umbrella"
      opts[:path] -> "path"
      opts[:git] || opts[:github] -> "git"
      true -> "hex"
    end
  end

  defp locked({:hex, _package, version, _hash, _managers, _deps, _repo, _outer}), do: version
  defp locked({:hex, _package, version, _hash, _managers, _deps, _repo}), do: version
  defp locked({:hex, _package, version, _hash, _managers, _deps}), do: version
  defp locked({:git, _url, revision, _opts}), do: revision
  defp locked(_), do: nil

  defp otp_version do
    release = to_string(:erlang.system_info(:otp_release))

    case File.read(Path.join([:code.root_dir(), "releases", release, "OTP_VERSION"])) do
      {:ok, version} -> String.trim(version)
      _ -> release
    end
  end
end

DrydockProjectInfo.main()
