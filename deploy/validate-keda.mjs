// Validates KEDA objects with the generated validators of npm @kubernetes-models/keda (pinned by
// scripts/setup into .tools/npm): the JSON schema of each kind, as KEDA's CRDs define it.
//
//   node deploy/validate-keda.mjs NODE_MODULES_DIR < objects.json
//
// Reads a JSON array of objects on stdin; prints one line per object, `ok KIND/NAME` or
// `invalid KIND/NAME: why`, and exits 1 if any is invalid or of a kind it does not know.
// (The schema does not know which metadata keys a trigger type takes: tests/deploy.rs checks
// those against the scaler's documented fields.)
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.argv[2];
if (!modules) {
  console.error("usage: node validate-keda.mjs NODE_MODULES_DIR < objects.json");
  process.exit(2);
}
const keda = await import(
  pathToFileURL(join(modules, "@kubernetes-models/keda/keda.sh/v1alpha1/index.js")).href
);
const kinds = {
  ScaledObject: keda.ScaledObject,
  ScaledJob: keda.ScaledJob,
  TriggerAuthentication: keda.TriggerAuthentication,
  ClusterTriggerAuthentication: keda.ClusterTriggerAuthentication,
};

const objects = JSON.parse(readFileSync(0, "utf8"));
let failed = false;
for (const object of objects) {
  const name = `${object.kind}/${object.metadata?.name ?? "?"}`;
  const Model = object.apiVersion === "keda.sh/v1alpha1" ? kinds[object.kind] : undefined;
  if (!Model) {
    console.log(`invalid ${name}: not a KEDA kind this validator knows (${object.apiVersion})`);
    failed = true;
    continue;
  }
  try {
    new Model(object).validate();
    console.log(`ok ${name}`);
  } catch (error) {
    console.log(`invalid ${name}: ${error.message}`);
    failed = true;
  }
}
process.exit(failed ? 1 : 0);
