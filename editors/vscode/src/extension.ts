// Starts the gpu-async-lsp language server for MLIR documents.
//
// The .vsix carries the server and its pure-Python dependencies (bundled/libs), as
// ruff-vscode does; it needs a Python >= 3.11 to run them. The command, in order:
//   1. the `gpuAsyncLsp.server.command` setting, when set;
//   2. with `gpuAsyncLsp.importStrategy` "fromEnvironment" (the default): `gpu-async-lsp` on
//      PATH, else the interpreter's own `gpu_async_lsp` (`python -m gpu_async_lsp`) when it
//      has one;
//   3. the bundled server, run by the interpreter: `gpuAsyncLsp.interpreter`, else the one
//      selected in the Python extension (ms-python), else `python3` on PATH.
// A server that cannot be started gives one error message saying how to fix it.
import * as childProcess from "child_process";
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";

const SECTION = "gpuAsyncLsp";
const MIN_PYTHON: [number, number] = [3, 11];
const INSTALL_HINT =
  "set gpuAsyncLsp.interpreter to a Python >= 3.11 (the extension runs its bundled server with it), " +
  "or gpuAsyncLsp.server.command to a gpu-async-lsp you installed";

/** Why no server command could be made: said once, in one error message. */
class NoServer extends Error {}

let client: LanguageClient | undefined;
let output: vscode.OutputChannel | undefined;
let traceOutput: vscode.OutputChannel | undefined;
let starting: Promise<void> | undefined;
let extensionRoot = "";

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  extensionRoot = context.extensionPath;
  output = vscode.window.createOutputChannel("GPU Async Language Server");
  traceOutput = vscode.window.createOutputChannel("GPU Async Language Server Trace");
  context.subscriptions.push(output, traceOutput);
  context.subscriptions.push(
    vscode.commands.registerCommand("gpuAsyncLsp.restartServer", () => restart()),
    vscode.commands.registerCommand("gpuAsyncLsp.showOutput", () => output?.show(true)),
    vscode.workspace.onDidChangeConfiguration((event) => {
      // The server's settings reach the running server through the client's configuration
      // synchronization (clientOptions.middleware); a new command needs a new process.
      if (
        event.affectsConfiguration(`${SECTION}.server.command`) ||
        event.affectsConfiguration(`${SECTION}.interpreter`) ||
        event.affectsConfiguration(`${SECTION}.importStrategy`)
      ) {
        void restart();
      }
    }),
  );
  await start();
}

export async function deactivate(): Promise<void> {
  await stop();
}

async function restart(): Promise<void> {
  await stop();
  await start();
}

async function stop(): Promise<void> {
  const old = client;
  client = undefined;
  if (old) {
    try {
      await old.stop(2000);
    } catch (err) {
      output?.appendLine(`stopping the server: ${String(err)}`);
    }
    await old.dispose(2000).catch(() => undefined);
  }
}

async function start(): Promise<void> {
  if (starting) {
    return starting;
  }
  starting = doStart().finally(() => {
    starting = undefined;
  });
  return starting;
}

async function doStart(): Promise<void> {
  let command: string[];
  try {
    command = await serverCommand();
  } catch (err) {
    if (!(err instanceof NoServer)) throw err;
    await showStartError(`GPU Async: ${err.message}`, `${SECTION}.interpreter`);
    return;
  }
  output?.appendLine(`starting: ${command.map(quote).join(" ")}`);
  if (!commandExists(command[0])) {
    // Checked here: a command the client fails to spawn gets a message of the client's own
    // besides ours (one message, not two).
    await showStartError(`GPU Async: ${command[0]} not found: ${INSTALL_HINT}.`, `${SECTION}.server.command`);
    return;
  }
  const [executable, ...args] = command;
  const serverOptions: ServerOptions = {
    command: executable,
    args,
    transport: TransportKind.stdio,
    options: { env: process.env },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ language: "mlir" }, { pattern: "**/*.mlir" }],
    initializationOptions: () => serverSettings(),
    // The client calls the middleware once started and on each change of the section. Left
    // to itself it would send the whole section, package.json's defaults included, which
    // would hide the repository's configuration file; it sends what the user set instead.
    synchronize: { configurationSection: SECTION },
    middleware: {
      workspace: {
        didChangeConfiguration: () =>
          lc.sendNotification(DidChangeConfigurationNotification.type, {
            settings: { [SECTION]: serverSettings() },
          }),
      },
    },
    outputChannel: output,
    traceOutputChannel: traceOutput,
    errorHandler: {
      error: () => ({ action: ErrorAction.Continue }),
      closed: () => {
        // A server that never started was reported by doStart: one message, not two
        // (`handled`: the client shows none of its own).
        if (!running.has(lc)) return { action: CloseAction.DoNotRestart, handled: true };
        void vscode.window
          .showErrorMessage(
            "The GPU Async language server stopped. See its output for the reason.",
            "Show Output",
            "Restart Server",
          )
          .then((choice) => {
            if (choice === "Show Output") output?.show(true);
            if (choice === "Restart Server") void restart();
          });
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    },
  };
  const lc = new LanguageClient(SECTION, "GPU Async Language Server", serverOptions, clientOptions);
  client = lc;
  try {
    await lc.start();
    running.add(lc);
  } catch (err) {
    if (client === lc) client = undefined;
    await lc.dispose(1000).catch(() => undefined);
    await showStartError(startFailure(command, err), `${SECTION}.server.command`);
  }
}

/** The clients whose server started (a later exit of theirs is worth a message). */
const running = new WeakSet<LanguageClient>();

async function showStartError(message: string, setting: string): Promise<void> {
  output?.appendLine(message);
  const choice = await vscode.window.showErrorMessage(message, "Open Settings", "Show Output");
  if (choice === "Open Settings") {
    void vscode.commands.executeCommand("workbench.action.openSettings", setting);
  } else if (choice === "Show Output") {
    output?.show(true);
  }
}

function startFailure(command: string[], err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: string } | undefined)?.code;
  if (code === "ENOENT" || /ENOENT|not found/i.test(text)) {
    return `GPU Async: ${command[0]} not found: ${INSTALL_HINT}. (${text})`;
  }
  return (
    `GPU Async: the language server (${command.map(quote).join(" ")}) could not be started: ${text}. ` +
    `Is gpu-async-lsp installed? ${INSTALL_HINT}.`
  );
}

/** The settings of package.json that the server reads (the others start the server). */
const SERVER_SETTINGS = ["strict", "semantics", "threadLaunch", "lowering", "select", "ignore", "severity", "waitsOnHints"];

/**
 * The server's settings that the user set, as initializationOptions and with each
 * workspace/didChangeConfiguration. A setting the user did not set is left out, never sent
 * as package.json's default: the server then takes the value of the repository's
 * configuration file (gpu-async-lsp.toml, [tool.gpu-async-lsp] in pyproject.toml), else its
 * own default. A setting the user removes is left out of the next notification, and the
 * file's value applies again. The value sent is VS Code's (user < workspace, `[mlir]` ones
 * over those).
 */
function serverSettings(): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration(SECTION, { languageId: "mlir" });
  const settings: Record<string, unknown> = {};
  for (const key of SERVER_SETTINGS) {
    if (setByUser(config.inspect(key))) {
      settings[key] = config.get(key);
    }
  }
  return settings;
}

/** Whether a setting has a value in the user's, the workspace's or a folder's settings,
 * for all languages or for `[mlir]` (not only a default). */
function setByUser(inspected: ReturnType<vscode.WorkspaceConfiguration["inspect"]>): boolean {
  if (!inspected) return false;
  return [
    inspected.globalValue,
    inspected.workspaceValue,
    inspected.workspaceFolderValue,
    inspected.globalLanguageValue,
    inspected.workspaceLanguageValue,
    inspected.workspaceFolderLanguageValue,
  ].some((value) => value !== undefined);
}

async function serverCommand(): Promise<string[]> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const configured = config.get<string[]>("server.command", []);
  if (Array.isArray(configured) && configured.length > 0 && configured.every((s) => typeof s === "string")) {
    return configured;
  }
  const strategy = config.get<string>("importStrategy", "fromEnvironment");
  if (strategy !== "useBundled") {
    const onPath = findOnPath("gpu-async-lsp");
    if (onPath) {
      return [onPath];
    }
  }
  const python = await interpreter();
  const version = pythonVersion(python);
  if (strategy !== "useBundled" && version && atLeast(version, MIN_PYTHON) && canImport(python, "gpu_async_lsp")) {
    return [...python, "-m", "gpu_async_lsp"];
  }
  const launcher = path.join(extensionRoot, "bundled", "tool", "launch.py");
  if (!fs.existsSync(launcher)) {
    throw new NoServer(`this build of the extension has no bundled server (${launcher}): ${INSTALL_HINT}.`);
  }
  const want = MIN_PYTHON.join(".");
  if (!version) {
    throw new NoServer(
      `no Python found to run the language server (tried ${python.map(quote).join(" ")}): ` +
        `install Python >= ${want} or ${INSTALL_HINT}.`,
    );
  }
  if (!atLeast(version, MIN_PYTHON)) {
    throw new NoServer(
      `the language server needs Python >= ${want}, and ${python.map(quote).join(" ")} is ` +
        `Python ${version.join(".")}: ${INSTALL_HINT}.`,
    );
  }
  // -I: neither PYTHONPATH nor the user's site-packages may put other versions of the
  // server's dependencies in front of the bundled ones.
  return [...python, "-I", launcher];
}

/** The Python that runs the server: the setting, the Python extension's, python3 on PATH. */
async function interpreter(): Promise<string[]> {
  const setting = vscode.workspace.getConfiguration(SECTION).get<string[] | string>("interpreter", []);
  const configured = typeof setting === "string" ? (setting ? [setting] : []) : setting;
  if (Array.isArray(configured) && configured.length > 0 && configured.every((s) => typeof s === "string")) {
    return configured.map((s) => s.replace(/^~(?=$|\/)/, process.env.HOME ?? "~"));
  }
  const selected = await selectedPython();
  if (selected) return [selected];
  return [findOnPath(process.platform === "win32" ? "python" : "python3") ?? "python3"];
}

/** (major, minor) of a Python, or undefined when it does not run. */
function pythonVersion(python: string[]): [number, number] | undefined {
  const [exe, ...args] = python;
  const run = childProcess.spawnSync(exe, [...args, "-c", "import sys; print(*sys.version_info[:2])"], {
    encoding: "utf8",
    timeout: 10000,
  });
  const m = run.status === 0 ? /^(\d+) (\d+)/.exec(run.stdout ?? "") : null;
  if (!m) {
    output?.appendLine(`${python.map(quote).join(" ")}: no Python (${run.error?.message ?? run.stderr ?? run.status})`);
    return undefined;
  }
  return [Number(m[1]), Number(m[2])];
}

function atLeast(version: [number, number], want: [number, number]): boolean {
  return version[0] > want[0] || (version[0] === want[0] && version[1] >= want[1]);
}

/** Whether the interpreter has `module` installed (the folder it runs in does not count). */
function canImport(python: string[], module: string): boolean {
  const [exe, ...args] = python;
  const probe = `import sys; sys.path[:] = [p for p in sys.path if p not in ("", ".")]; import ${module}`;
  const run = childProcess.spawnSync(exe, [...args, "-c", probe], { timeout: 20000 });
  return run.status === 0;
}

/** Whether a command's executable exists: a path to an executable file, or a name on PATH. */
function commandExists(name: string): boolean {
  if (name.includes("/") || name.includes("\\")) {
    try {
      fs.accessSync(name, fs.constants.X_OK);
      return fs.statSync(name).isFile();
    } catch {
      return false;
    }
  }
  return findOnPath(name) !== undefined;
}

function findOnPath(name: string): string | undefined {
  const exts = process.platform === "win32" ? (process.env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";") : [""];
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    for (const ext of exts) {
      const candidate = path.join(dir, name + ext);
      try {
        fs.accessSync(candidate, fs.constants.X_OK);
        if (fs.statSync(candidate).isFile()) return candidate;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/** The interpreter selected in the Python extension, when it is installed. */
async function selectedPython(): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension("ms-python.python");
  if (!ext) return undefined;
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    // Newer API: environments.getActiveEnvironmentPath / resolveEnvironment.
    const envs = api?.environments;
    if (envs?.getActiveEnvironmentPath) {
      const active = envs.getActiveEnvironmentPath(resource);
      const resolved = envs.resolveEnvironment ? await envs.resolveEnvironment(active) : undefined;
      const exe = resolved?.executable?.uri?.fsPath ?? active?.path;
      if (typeof exe === "string" && exe) return exe;
    }
    // Older API: settings.getExecutionDetails.
    const details = api?.settings?.getExecutionDetails?.(resource);
    const cmd = details?.execCommand;
    if (Array.isArray(cmd) && typeof cmd[0] === "string" && cmd[0]) return cmd[0];
  } catch (err) {
    output?.appendLine(`could not ask the Python extension for its interpreter: ${String(err)}`);
  }
  return undefined;
}

function quote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

