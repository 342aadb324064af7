// Package tasks owns the task queue file, the result record and the out
// directory that lets a rerun resume.
//
// # Task files
//
// A task file is YAML (any name but *.jsonl and *.ndjson) or JSON Lines
// (*.jsonl, *.ndjson). The YAML form is a mapping:
//
//	defaults:            # optional: applies to every task that leaves a key unset
//	  repo: https://github.com/example/app.git
//	  timeout: 30m
//	tasks:
//	  - id: fix-typo
//	    prompt: Fix the typo in README.md.
//
// or, with no defaults, just the list of tasks. Anchors, aliases and merge
// keys (<<: *common) may be used. In JSON Lines each non-blank line is one
// task object; the first non-blank line may instead be {"defaults": {...}}.
//
// The keys of a task are id, repo, ref, prompt or prompt_file, branch
// (default agent/<id>), check, check_retries, check_timeout, image, runtime, model,
// provider (a name of internal/provider), protocol (native, xml or auto), budget_usd, max_steps, timeout,
// network (none, bridge, or {allow: [host, *.domain:port]}; default none), limits (memory, cpus, pids), env,
// push, and the policy: protected_paths
// (globs; policy.DefaultProtected when unset, none when []), deny_commands
// (Go regular expressions), pre_tool_hook (an executable on the host) and
// hook_timeout; and exclude (gitignore patterns for untracked build and
// cache artifacts left out of the commit; DefaultExclude when unset, none
// when []); and delegate (true, or {max_depth, max_steps}: sub-agents
// the agent may hand subtasks to; off when unset). All but id, prompt, prompt_file and branch may also be set
// in defaults; limits and env merge key by key, the other keys (lists
// included) are replaced whole. max_prompt_size (default 4m) may only be set
// in defaults: it caps every prompt of the file; so may backend (docker or
// kubernetes: the sandbox backend of the file's run, see Queue.Backend). Relative repo paths, prompt
// files and hooks are resolved against the directory of the task file.
// Durations use Go syntax (30m, 1h30m); memory sizes are binary (512m, 2g).
//
// A task file is UTF-8 (a byte order mark is skipped); it may be a regular
// file or a pipe, and JSON Lines are read one line at a time. A prompt file
// must be a regular file. Branches that git could not hold together (a and
// a/b) are refused, as is a branch written as a full ref (refs/heads/x).
//
// env is for non-secret values only: whatever is in it can be read, and
// leaked, by the agent. Values that look like credentials (API keys, GitHub,
// GitLab, Slack or AWS tokens, private keys) are refused. Secrets the host
// needs, such as the model's API key or push credentials, stay with the
// runner and never enter the sandbox.
//
// Parsing is strict, and every problem in a file is reported at once as a
// *ValidationError whose lines read
//
//	tasks.yaml:12:5: task "fix-typo": unknown key "promt" (did you mean "prompt"?)
//
// # Out directory
//
// A run records into an out directory (see OpenStore) that it locks for
// itself. results.jsonl gets one Result per line, each appended whole and
// synced; state/<id>.json marks each attempt as it starts. A rerun skips the
// tasks whose last attempt has a final result, and runs again those that were
// started but have none (they were interrupted).
package tasks
