//! docs/ci.md's jobs run as written: the shell steps of its GitHub Actions and GitLab CI
//! jobs, taken from the page, against a real service (a keep-alive Python server with
//! TCP_NODELAY, started by the jobs' own `./start-service.sh PORT DIR`), with `nodelay` on the
//! PATH. Only the installing steps are left out. Each job must pass and leave its summary.

mod common;

use common::repo_root;
use std::path::Path;
use std::process::Command;

/// The ```yaml blocks of docs/ci.md, in order.
fn yaml_blocks() -> Vec<String> {
    let page = std::fs::read_to_string(repo_root().join("docs/ci.md")).expect("docs/ci.md");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in page.lines() {
        match (&mut current, line.trim_start()) {
            (None, "```yaml") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

/// GitHub's `run:` steps (one line, or a `|` block), each as one script; those of a step
/// named "Install ..." are left out.
fn github_steps(yaml: &str) -> Vec<String> {
    let lines: Vec<&str> = yaml.lines().collect();
    let mut steps = Vec::new();
    let mut name = "";
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index].trim_start();
        if let Some(step_name) = line.strip_prefix("- name: ") {
            name = step_name;
        } else if line.starts_with("- uses: ") {
            name = "";
        }
        if let Some(run) = line.strip_prefix("run: ") {
            let indent = lines[index].len() - line.len();
            let script = if run == "|" {
                let body: Vec<&str> = lines[index + 1..]
                    .iter()
                    .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > indent)
                    .copied()
                    .collect();
                index += body.len();
                body.iter().map(|l| l.trim_start()).collect::<Vec<_>>().join("\n")
            } else {
                run.to_string()
            };
            if !name.starts_with("Install") {
                steps.push(script);
            }
        }
        index += 1;
    }
    steps
}

/// GitLab's `script:` items, as one script (GitLab runs them in one shell); a `git` line,
/// which needs the project's remote, is left out.
fn gitlab_script(yaml: &str) -> String {
    let mut in_script = false;
    let mut lines = Vec::new();
    for line in yaml.lines() {
        let trimmed = line.trim_start();
        if trimmed == "script:" {
            in_script = true;
        } else if in_script {
            match trimmed.strip_prefix("- ") {
                Some(item) if !item.starts_with("git ") => lines.push(item.to_string()),
                Some(_) => {}
                None => in_script = false,
            }
        }
    }
    lines.join("\n")
}

/// Two free ports on loopback (bound, then let go for the service to take).
fn free_ports() -> [u16; 2] {
    let listeners = [0, 1].map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap());
    listeners.map(|l| l.local_addr().unwrap().port())
}

/// A job's directory: `start-service.sh PORT DIR` (the service each job starts) and `main/`.
fn job_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("nodelay-ci-{name}-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("main")).unwrap();
    let server = repo_root().join("tests/peers/keepalive_port_server.py");
    let script = format!("#!/bin/sh\nexec python3 {} --port \"$1\"\n", server.display());
    let start = dir.join("start-service.sh");
    std::fs::write(&start, script).unwrap();
    Command::new("chmod").arg("+x").arg(&start).status().unwrap();
    dir
}

/// Runs `script` with bash in `dir`, the docs' ports replaced by free ones, `nodelay` on the
/// PATH and `env` set; the services it starts end with it.
fn run_job(dir: &Path, script: &str, env: &[(&str, &Path)]) -> std::process::Output {
    let [pr, main] = free_ports();
    let script = script.replace("8080", &pr.to_string()).replace("8081", &main.to_string());
    let bin = Path::new(env!("CARGO_BIN_EXE_nodelay")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    // The services end with the script: its background jobs are killed on the way out.
    let wrapped = format!("set -e\ntrap 'kill $(jobs -p) 2>/dev/null' EXIT\n{script}\n");
    let mut command = Command::new("bash");
    command.args(["-c", &wrapped]).current_dir(dir).env("PATH", path);
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("bash")
}

#[test]
fn the_github_job_runs_as_written_and_writes_its_step_summary() {
    let blocks = yaml_blocks();
    let github = blocks.iter().find(|b| b.contains("runs-on:")).expect("the GitHub Actions job");
    let steps = github_steps(github);
    assert_eq!(steps.len(), 3, "start, diagnose, compare: {steps:#?}");
    let dir = job_dir("github");
    let summary = dir.join("step-summary.md");
    // Its steps share the job's shell here, as the services they start outlive their step.
    let output = run_job(&dir, &steps.join("\n"), &[("GITHUB_STEP_SUMMARY", &summary)]);
    let said =
        format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{said}");
    let markdown = std::fs::read_to_string(&summary).unwrap_or_default();
    std::fs::remove_dir_all(&dir).ok();
    assert!(markdown.contains("### nodelay doctor: "), "{markdown}");
    assert!(markdown.contains("### nodelay compare: ✔ 1 of 1 thresholds held"), "{markdown}");
}

#[test]
fn the_gitlab_job_runs_as_written_and_keeps_its_summary() {
    let blocks = yaml_blocks();
    let gitlab = blocks.iter().find(|b| b.contains("script:")).expect("the GitLab CI job");
    let dir = job_dir("gitlab");
    let output = run_job(&dir, &gitlab_script(gitlab), &[]);
    let said =
        format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{said}");
    let markdown = std::fs::read_to_string(dir.join("summary.md")).unwrap_or_default();
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        markdown.contains("### nodelay doctor: ") && markdown.contains("### nodelay compare: "),
        "{markdown}"
    );
}
