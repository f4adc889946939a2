// Starts the gpu-async-lsp language server for MLIR documents.
//
// The server command: the `gpuAsyncLsp.server.command` setting when set; else `gpu-async-lsp`
// on PATH; else the Python interpreter selected in the Python extension (ms-python) with
// `-m gpu_async_lsp`; else `python3 -m gpu_async_lsp`. A server that cannot be started gives an
// error message saying how to fix it, not a silent failure.
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,

  TransportKind,
} from "vscode-languageclient/node";

const SECTION = "gpuAsyncLsp";
const INSTALL_HINT =
  "pip install gpu-async-lsp (in the Python environment VS Code uses) or set gpuAsyncLsp.server.command";

let client: LanguageClient | undefined;
let output: vscode.OutputChannel | undefined;
let traceOutput: vscode.OutputChannel | undefined;
let starting: Promise<void> | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("GPU Async Language Server");
  traceOutput = vscode.window.createOutputChannel("GPU Async Language Server Trace");
  context.subscriptions.push(output, traceOutput);
  context.subscriptions.push(
    vscode.commands.registerCommand("gpuAsyncLsp.restartServer", () => restart()),
    vscode.commands.registerCommand("gpuAsyncLsp.showOutput", () => output?.show(true)),
    vscode.workspace.onDidChangeConfiguration((event) => {
      // strict, semantics, threadLaunch and severity reach the running server through the client's
      // configuration synchronization; a new command needs a new process.
      if (event.affectsConfiguration(`${SECTION}.server.command`)) {
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
  const command = await serverCommand();
  output?.appendLine(`starting: ${command.map(quote).join(" ")}`);
  const [executable, ...args] = command;
  const serverOptions: ServerOptions = {
    command: executable,
    args,
    transport: TransportKind.stdio,
    options: { env: process.env },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ language: "mlir" }, { pattern: "**/*.mlir" }],
    synchronize: { configurationSection: SECTION },
    initializationOptions: () => serverSettings(),
    outputChannel: output,
    traceOutputChannel: traceOutput,
    errorHandler: {
      error: () => ({ action: ErrorAction.Continue }),
      closed: () => {
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
        return { action: CloseAction.DoNotRestart };
      },
    },
  };
  const lc = new LanguageClient(SECTION, "GPU Async Language Server", serverOptions, clientOptions);
  client = lc;
  try {
    await lc.start();
  } catch (err) {
    if (client === lc) client = undefined;
    await lc.dispose(1000).catch(() => undefined);
    const message = startFailure(command, err);
    output?.appendLine(message);
    const choice = await vscode.window.showErrorMessage(message, "Open Settings", "Show Output");
    if (choice === "Open Settings") {
      void vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.server.command`);
    } else if (choice === "Show Output") {
      output?.show(true);
    }
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

/** The settings the server reads, as initializationOptions (the same object the client syncs). */
function serverSettings(): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration(SECTION);
  return {
    strict: config.get<boolean>("strict", false),
    semantics: config.get<string>("semantics", "original"),
    threadLaunch: config.get<boolean>("threadLaunch", false),
    severity: config.get<Record<string, string>>("severity", {}),
  };
}

async function serverCommand(): Promise<string[]> {
  const configured = vscode.workspace.getConfiguration(SECTION).get<string[]>("server.command", []);
  if (Array.isArray(configured) && configured.length > 0 && configured.every((s) => typeof s === "string")) {
    return configured;
  }
  const onPath = findOnPath("gpu-async-lsp");
  if (onPath) {
    return [onPath];
  }
  const python = await selectedPython();
  if (python) {
    return [python, "-m", "gpu_async_lsp"];
  }
  return [process.platform === "win32" ? "python" : "python3", "-m", "gpu_async_lsp"];
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

