//! A program whose behaviour is chosen by its arguments, for exercising `run`.

use std::io::{self, Read, Write};
use std::process::{Command, ExitCode};
use std::thread;
use std::time::Duration;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    println!("cargo-clean: hello on stdout");
    eprintln!("cargo-clean: hello on stderr");
    println!("args: {args:?}");

    let mut exit_code = 0;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--echo-stdin" => echo_stdin(),
            "--exit" => {
                exit_code = rest
                    .next()
                    .and_then(|n| cargo_clean::parse_exit_code(n))
                    .unwrap_or(2);
            }
            "--sleep-forever" => sleep_forever(),
            "--spawn-grandchild" => spawn_grandchild(),
            "--flood" => {
                let megabytes = rest.next().and_then(|n| n.parse().ok()).unwrap_or(1);
                flood(megabytes);
            }
            _ => {}
        }
    }
    ExitCode::from(u8::try_from(exit_code).unwrap_or(1))
}

fn echo_stdin() {
    let mut input = String::new();
    io::stdin()
        .read_to_string(&mut input)
        .expect("stdin is readable");
    print!("stdin: {input}");
    io::stdout().flush().expect("stdout is writable");
}

fn sleep_forever() -> ! {
    io::stdout().flush().expect("stdout is writable");
    loop {
        thread::sleep(Duration::from_secs(3600));
    }
}

fn spawn_grandchild() -> ! {
    let mut child = Command::new("sleep")
        .arg("1000")
        .spawn()
        .expect("sleep can be spawned");
    println!("grandchild pid: {}", child.id());
    io::stdout().flush().expect("stdout is writable");
    // Waiting keeps the grandchild reaped; either way this process never exits on its own.
    let _ = child.wait();
    sleep_forever()
}

fn flood(megabytes: usize) {
    let line = "x".repeat(1023) + "\n";
    let mut out = io::stdout().lock();
    for _ in 0..megabytes * 1024 {
        if out.write_all(line.as_bytes()).is_err() {
            return;
        }
    }
    let _ = out.flush();
}
