// Validates rendered manifests offline: each object against the OpenAPI-derived schema of
// its kind in the npm package kubernetes-models (@kubernetes-models/prometheus-operator for
// the PodMonitor), plus a check for fields the API does not have, which those schemas let
// through. Writes each file's objects as JSON for check_manifests.py.
//   node validate.mjs MODULES OUT_DIR NAME=FILE.yaml...   (MODULES: the npm install prefix)
//   node validate.mjs MODULES --self-test FILE.yaml       (broken copies must be refused)
//   node validate.mjs MODULES --json FILE.yaml OUT.json   (parse only)
// Exit status 1 when any object is refused; a kind with no schema is refused, not skipped.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, mode, ...rest] = process.argv.slice(2);
const nodeModules = path.join(modules, "node_modules");
const { parseAllDocuments } = await import(pathToFileURL(path.join(nodeModules, "yaml/dist/index.js")));

// apiVersion -> the package folder that holds its models.
function modelFile(apiVersion, kind) {
  if (apiVersion === "monitoring.coreos.com/v1") {
    return path.join(nodeModules, "@kubernetes-models/prometheus-operator", apiVersion, kind);
  }
  return path.join(nodeModules, "kubernetes-models", apiVersion, kind);
}

// Field names from the model's TypeScript declarations: the class body lists every field
// of the type, inherited ones included, and its imports say where each field's type is.
const declCache = new Map();
function resolveImport(fromFile, spec) {
  if (spec.startsWith(".")) return path.resolve(path.dirname(fromFile), spec.replace(/\.js$/, ".d.ts"));
  for (let dir = path.dirname(fromFile); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "node_modules", spec + ".d.ts");
    if (fs.existsSync(candidate)) return candidate;
    if (dir === path.dirname(dir)) return null;
  }
}
function typeOf(text, imports) {
  text = text.trim().replace(/;$/, "").trim();
  const array = /^Array<(.+)>$/s.exec(text);
  if (array) return { array: typeOf(array[1], imports) };
  const map = /^\{\s*\[key: string\]:\s*([^;]+);\s*\}$/s.exec(text);
  if (map) return { map: typeOf(map[1], imports) };
  if (imports.has(text)) return { file: imports.get(text) };
  return { leaf: text };  // string, number, a union of literals, or an inline type
}
function declaration(file) {
  if (declCache.has(file)) return declCache.get(file);
  const source = file && fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "";
  const imports = new Map();
  for (const m of source.matchAll(/^import \{ ([^}]+) \} from "([^"]+)";$/gm)) {
    const target = resolveImport(file, m[2]);
    for (const name of m[1].split(",").map((s) => s.trim())) if (target) imports.set(name, target);
  }
  let fields = null;  // a type without a class (an alias of string or number) has no fields
  const lines = source.split("\n");
  const start = lines.findIndex((l) => /^export declare class \w+ extends Model</.test(l));
  if (start >= 0) {
    fields = new Map();
    for (let i = start + 1; i < lines.length && lines[i] !== "}"; i++) {
      const m = /^ {4}"([^"]+)"\??: (.*)$/.exec(lines[i]);
      if (!m) continue;
      let text = m[2];
      let depth = (text.match(/\{/g) || []).length - (text.match(/\}/g) || []).length;
      while (depth > 0 && ++i < lines.length) {
        text += "\n" + lines[i];
        depth += (lines[i].match(/\{/g) || []).length - (lines[i].match(/\}/g) || []).length;
      }
      fields.set(m[1], typeOf(text, imports));
    }
  }
  const decl = { fields };
  declCache.set(file, decl);
  return decl;
}
function unknownFields(value, type, where, out) {
  if (value === null || value === undefined) return;
  if (type.array) {
    if (Array.isArray(value)) value.forEach((v, i) => unknownFields(v, type.array, `${where}[${i}]`, out));
  } else if (type.map) {
    if (typeof value === "object") for (const [k, v] of Object.entries(value)) unknownFields(v, type.map, `${where}.${k}`, out);
  } else if (type.file) {
    const { fields } = declaration(type.file);
    if (!fields || typeof value !== "object" || Array.isArray(value)) return;
    for (const [k, v] of Object.entries(value)) {
      if (!fields.has(k)) out.push(`${where}.${k}: no such field`);
      else unknownFields(v, fields.get(k), `${where}.${k}`, out);
    }
  }
}

// The problems with one object: none, or lines naming each.
async function problems(obj) {
  const { apiVersion, kind } = obj ?? {};
  if (!apiVersion || !kind) return ["an object without apiVersion and kind"];
  const file = modelFile(apiVersion, kind);
  if (!fs.existsSync(file + ".js")) return [`${apiVersion} ${kind}: no schema to check it against`];
  const Model = (await import(pathToFileURL(file + ".js")))[kind];
  const found = [];
  try {
    new Model(obj).validate();
  } catch (e) {
    for (const err of e.errors ?? [{ instancePath: "", message: e.message }]) {
      found.push(`${err.instancePath || "/"} ${err.message}${err.params?.allowedValues ? ": " + err.params.allowedValues.join(", ") : ""}`);
    }
  }
  unknownFields(obj, { file: file + ".d.ts" }, "", found);
  return found.map((p) => `${kind} ${obj.metadata?.name ?? "?"}: ${p}`);
}

function readObjects(file) {
  const docs = parseAllDocuments(fs.readFileSync(file, "utf8"));
  for (const d of docs) if (d.errors.length) throw new Error(`${file}: ${d.errors[0].message}`);
  return docs.map((d) => d.toJS()).filter((o) => o !== null);
}

if (mode === "--json") {
  // A YAML file that is no Kubernetes object (prometheus-adapter's rules), as JSON.
  fs.writeFileSync(rest[1], JSON.stringify(readObjects(rest[0]), null, 1));
  process.exit(0);
}

if (mode === "--self-test") {
  // Each broken copy of the file's first DaemonSet or Deployment must be refused.
  const objects = readObjects(rest[0]);
  const workload = objects.find((o) => o.kind === "DaemonSet" || o.kind === "Deployment");
  const breakages = {
    "a port as a string": (w) => { w.spec.template.spec.containers[0].ports[0].containerPort = "50051"; },
    "the grace period as a string": (w) => { w.spec.template.spec.terminationGracePeriodSeconds = "45"; },
    "a misspelt field (readinesProbe)": (w) => {
      const c = w.spec.template.spec.containers[0];
      c.readinesProbe = c.readinessProbe;
      delete c.readinessProbe;
    },
    "an unknown field in securityContext": (w) => { w.spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem = true; },
    "a required field left out (containers)": (w) => { delete w.spec.template.spec.containers; },
    "a value outside its enum (seccomp type)": (w) => { w.spec.template.spec.securityContext.seccompProfile.type = "Default"; },
    "a kind with no schema": (w) => { w.kind = "DaemonSett"; },
  };
  let failed = false;
  if ((await problems(workload)).length) {
    console.error("validate self-test: the unbroken workload is refused already");
    failed = true;
  }
  for (const [what, breakIt] of Object.entries(breakages)) {
    const copy = structuredClone(workload);
    breakIt(copy);
    const found = await problems(copy);
    if (found.length) console.log(`validate self-test: ${what}: refused (${found[0]})`);
    else { console.error(`validate self-test: ${what}: NOT refused`); failed = true; }
  }
  process.exit(failed ? 1 : 0);
}

const outDir = mode;
let failed = false;
for (const arg of rest) {
  const [name, file] = arg.split("=");
  const objects = readObjects(file);
  let bad = 0;
  for (const obj of objects) {
    for (const p of await problems(obj)) {
      console.error(`validate: ${name}: ${p}`);
      bad++;
    }
  }
  failed ||= bad > 0;
  const kinds = objects.map((o) => o.kind).join(", ");
  console.log(`validate: ${name}: ${objects.length} objects (${kinds}): ${bad ? bad + " problems" : "valid"}`);
  fs.writeFileSync(path.join(outDir, `${name}.json`), JSON.stringify(objects, null, 1));
}
process.exit(failed ? 1 : 0);
