# Prints `key=value` lines for dialyzer: OTP_VERSION has the full release ("25.2.3"),
# which may be absent.
release = List.to_string(:erlang.system_info(:otp_release))
otp_version = Path.join([:code.root_dir(), "releases", release, "OTP_VERSION"])
otp = case File.read(otp_version) do
  {:ok, version} -> String.trim(version)
  _ -> release
end
IO.puts("otp=#{otp}")
IO.puts("erts=#{:erlang.system_info(:version)}")
IO.puts("elixir=#{System.version()}")
IO.puts("elixir_ebin=#{Path.expand(:code.lib_dir(:elixir, :ebin))}")
