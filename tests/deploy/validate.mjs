// Validates every kustomize overlay of deploy/kubernetes, as `kubectl kustomize` renders it, against
// Kubernetes' own object schemas, so that a misspelt field or a wrong value fails the test (issue 20
// item 5, issue 41 item 4; run by ctest as deploy_manifests through render.sh):
//   1. kubernetes-models' validators (generated from the Kubernetes OpenAPI: types, enums, required
//      fields) — they accept unknown fields, so
//   2. TypeScript's excess-property check against the same package's interfaces rejects any field
//      the API does not have, at any depth.
// The API version is the one kubernetes-models 5.1.0 is generated from (its Container has
// restartPolicyRules, added in Kubernetes 1.34); ServiceMonitor from @kubernetes-models/
// prometheus-operator 6.0.0. A self-check first proves both steps reject a misspelt field.
// Then what the overlays promise: every overlay is there, the counters ConfigMap is
// deploy/default-counters.csv verbatim, every ConfigMap used is shipped, the image is the base's
// one reference, and the container's securityContext is least-privilege (no capabilities, no
// escalation, read-only root; non-root except where an overlay needs root and says why).
// Usage: node validate.mjs DIR, DIR holding one rendering per overlay, NAME.yaml.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import yaml from "js-yaml";
import ts from "typescript";

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = process.argv[2];
const source = path.join(here, "..", "..", "deploy");
const OVERLAYS = ["agent", "plain", "pod-labels", "servicemonitor", "tls-auth"];
const ROOT_OVERLAYS = new Set(["agent", "pod-labels"]);  // the node's root-owned socket and state dir

// kind → [module, interface, class]
const KINDS = {
  "apps/v1/DaemonSet": ["kubernetes-models/apps/v1/DaemonSet", "IDaemonSet", "DaemonSet"],
  "v1/ConfigMap": ["kubernetes-models/v1/ConfigMap", "IConfigMap", "ConfigMap"],
  "v1/Service": ["kubernetes-models/v1/Service", "IService", "Service"],
  "v1/Namespace": ["kubernetes-models/v1/Namespace", "INamespace", "Namespace"],
  "monitoring.coreos.com/v1/ServiceMonitor": [
    "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor",
    "IServiceMonitor",
    "ServiceMonitor",
  ],
};

function documents(file) {
  return yaml.loadAll(fs.readFileSync(file, "utf8")).filter((d) => d != null);
}

// Step 1: the package's runtime validation. Returns error strings.
async function runtimeErrors(doc, where) {
  const kind = KINDS[`${doc.apiVersion}/${doc.kind}`];
  if (!kind) return [`${where}: ${doc.apiVersion} ${doc.kind} is not a kind this test knows`];
  const mod = await import(kind[0]);
  try {
    new mod[kind[2]](doc).validate();
    return [];
  } catch (e) {
    return [`${where}: ${e.message}`];
  }
}

// Step 2: TypeScript's excess-property check, all documents in one program. Returns error strings.
function typeErrors(docs) {
  const tmp = fs.mkdtempSync(path.join(here, ".check-"));
  try {
    const lines = [];
    docs.forEach(({ doc, where }, i) => {
      const kind = KINDS[`${doc.apiVersion}/${doc.kind}`];
      if (!kind) return;
      lines.push(`import type { ${kind[1]} as T${i} } from "${kind[0]}";`);
      lines.push(`// ${where}\nexport const m${i}: T${i} = ${JSON.stringify(doc, null, 1)};`);
    });
    const file = path.join(tmp, "manifests.ts");
    fs.writeFileSync(file, lines.join("\n") + "\n");
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      types: [],
    });
    return ts.getPreEmitDiagnostics(program).map((d) => {
      const text = ts.flattenDiagnosticMessageText(d.messageText, "\n");
      if (!d.file || d.start === undefined) return text;
      const { line } = d.file.getLineAndCharacterOfPosition(d.start);
      const source = d.file.text.split("\n");
      let where = "";
      for (let l = line; l >= 0; --l) {
        if (source[l].startsWith("// ")) {
          where = source[l].slice(3);
          break;
        }
      }
      return `${where}: ${text}`;
    });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function check(docs) {
  const errors = [];
  for (const { doc, where } of docs) errors.push(...(await runtimeErrors(doc, where)));
  errors.push(...typeErrors(docs));
  return errors;
}

// The self-check: a misspelt field deep in a pod template, and a wrong enum value.
async function selfCheck() {
  const ds = (extra) => ({
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "x" },
    spec: {
      selector: { matchLabels: { a: "b" } },
      template: {
        metadata: { labels: { a: "b" } },
        spec: { containers: [{ name: "c", image: "i", ...extra }] },
      },
    },
  });
  const good = await check([{ doc: ds({}), where: "good" }]);
  const typo = typeErrors([{ doc: ds({ imagePullPolicyy: "Always" }), where: "typo" }]);
  const badEnum = await runtimeErrors(ds({ imagePullPolicy: "Sometimes" }), "enum");
  if (good.length || !typo.length || !badEnum.length) {
    throw new Error(`self-check: good=${good} typo=${typo} enum=${badEnum}`);
  }
}

await selfCheck();
if (!dir) {
  console.error("usage: node validate.mjs DIR (renderings of deploy/kubernetes/overlays/*, NAME.yaml)");
  process.exit(2);
}
const errors = [];
const files = fs.readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort();
const rendered = files.map((f) => f.slice(0, -".yaml".length));
const shipped = fs.readdirSync(path.join(source, "kubernetes", "overlays")).sort();
if (JSON.stringify(rendered) !== JSON.stringify(OVERLAYS) || JSON.stringify(shipped) !== JSON.stringify(OVERLAYS)) {
  errors.push(`overlays: expected ${OVERLAYS}, rendered ${rendered}, shipped ${shipped}`);
}
const csv = fs.readFileSync(path.join(source, "default-counters.csv"), "utf8");
const baseKustomization = yaml.load(fs.readFileSync(path.join(source, "kubernetes", "base", "kustomization.yaml"), "utf8"));
const image = `${baseKustomization.images[0].newName}:${baseKustomization.images[0].newTag}`;
let total = 0;
for (const overlay of rendered) {
  const docs = documents(path.join(dir, `${overlay}.yaml`)).map((doc) => ({
    doc,
    where: `${overlay}: ${doc.kind}/${doc.metadata?.name}`,
  }));
  total += docs.length;
  errors.push(...(await check(docs)));

  // The counters ConfigMap must be deploy/default-counters.csv, verbatim.
  const counters = docs.find(({ doc }) => doc.kind === "ConfigMap" && doc.metadata?.name === "gpulse-exporter-counters");
  if (!counters || counters.doc.data?.["default-counters.csv"] !== csv) {
    errors.push(`${overlay}: gpulse-exporter-counters is not deploy/default-counters.csv verbatim`);
  }
  const maps = new Set(docs.filter(({ doc }) => doc.kind === "ConfigMap").map(({ doc }) => doc.metadata.name));
  for (const { doc, where } of docs.filter(({ doc }) => doc.kind === "DaemonSet")) {
    const spec = doc.spec.template.spec;
    // Every ConfigMap a DaemonSet mounts or reads is shipped.
    const used = [
      ...(spec.volumes ?? []).filter((v) => v.configMap).map((v) => v.configMap.name),
      ...spec.containers.flatMap((c) => (c.envFrom ?? []).filter((e) => e.configMapRef).map((e) => e.configMapRef.name)),
    ];
    for (const name of used) if (!maps.has(name)) errors.push(`${where}: ConfigMap ${name} is not shipped`);
    for (const c of spec.containers) {
      if (c.image !== image) errors.push(`${where}: image ${c.image}, not the base's ${image}`);
      const sc = c.securityContext ?? {};
      if (sc.allowPrivilegeEscalation !== false) errors.push(`${where}: allowPrivilegeEscalation is not false`);
      if (sc.readOnlyRootFilesystem !== true) errors.push(`${where}: the root filesystem is not read-only`);
      if (JSON.stringify(sc.capabilities?.drop) !== JSON.stringify(["ALL"]) || sc.capabilities?.add) {
        errors.push(`${where}: capabilities are not exactly drop ALL`);
      }
      const root = sc.runAsUser === 0 || sc.runAsNonRoot !== true;
      if (root !== ROOT_OVERLAYS.has(overlay)) errors.push(`${where}: runs as ${root ? "root" : "non-root"}`);
    }
  }
}

if (errors.length) {
  console.error(errors.join("\n"));
  console.log(`0 passed, 1 failed: ${total} manifests in ${files.length} overlays`);
  process.exit(1);
}
console.log(`deploy manifests: ${total} manifests in ${files.length} overlays valid`);
