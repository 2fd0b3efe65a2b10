// Runs @huggingface/hub (the Hub's own JavaScript client) against a Hub at
// HUB_URL, for test_real_clients.py: node hfhub_client.mjs PKG_DIR JOB
// where JOB is JSON {hubUrl, accessToken?, ops: [{op, ...args}]}. Prints
// one JSON array, an {ok: result} or {error: message} per op, so that the
// test compares what the client read with the files themselves.
import { createHash } from "node:crypto";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [pkgDir, jobText] = process.argv.slice(2);
const hub = await import(pathToFileURL(path.join(pkgDir, "dist", "index.mjs")).href);
const job = JSON.parse(jobText);
const common = { hubUrl: job.hubUrl, ...(job.accessToken ? { accessToken: job.accessToken } : {}) };

async function run(o) {
    const base = { ...common, repo: o.repo, ...(o.revision ? { revision: o.revision } : {}) };
    switch (o.op) {
    case "listFiles": {
        const out = [];
        for await (const e of hub.listFiles({ ...base, recursive: !!o.recursive,
                                               ...(o.path ? { path: o.path } : {}) }))
            out.push({ type: e.type, path: e.path, size: e.size, oid: e.oid,
                       lfs: e.lfs ? { oid: e.lfs.oid, size: e.lfs.size } : null });
        return out;
    }
    case "downloadFile": {
        const blob = await hub.downloadFile({ ...base, path: o.path,
                                              ...(o.raw ? { raw: true } : {}) });
        if (blob === null)
            return null;
        const whole = Buffer.from(await blob.arrayBuffer());
        // A slice too: a range request of its own.
        const part = Buffer.from(await blob.slice(o.from ?? 0, o.to ?? 16).arrayBuffer());
        return { size: blob.size, sha256: createHash("sha256").update(whole).digest("hex"),
                 slice: part.toString("hex") };
    }
    case "fileExists":
        return await hub.fileExists({ ...base, path: o.path });
    case "parseSafetensorsMetadata": {
        const r = await hub.parseSafetensorsMetadata({ ...base, ...(o.path ? { path: o.path } : {}),
                                                       computeParametersCount: true });
        return { sharded: r.sharded, header: r.header ?? null, headers: r.headers ?? null,
                 index: r.index ?? null, parameterCount: r.parameterCount ?? null };
    }
    case "modelInfo": {
        const r = await hub.modelInfo({ ...common, name: o.repo,
                                        additionalFields: ["sha", "filePaths"],
                                        ...(o.revision ? { revision: o.revision } : {}) });
        return { id: r.id, name: r.name, sha: r.sha, private: r.private, gated: r.gated,
                 updatedAt: isNaN(r.updatedAt) ? null : r.updatedAt.toISOString(),
                 filePaths: r.filePaths };
    }
    default:
        throw new Error("unknown op " + o.op);
    }
}

const results = [];
for (const o of job.ops) {
    try {
        results.push({ ok: await run(o) });
    } catch (e) {
        results.push({ error: String(e && e.message ? e.message : e) +
                              (e && e.statusCode ? " (HTTP " + e.statusCode + ")" : "") });
    }
}
process.stdout.write(JSON.stringify(results, (k, v) => typeof v === "bigint" ? Number(v) : v));
