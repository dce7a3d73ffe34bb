import { Option } from 'commander';
import { bundleOf, collectSourceMaps, uploadBundle } from '../sourcemaps.ts';
import { CliExit, EXIT, type Family } from './command.ts';

/**
 * `cx sourcemaps upload <dir>`: the maps of a build made elsewhere. Collecting, bundling and the upload's requests
 * (sentry-cli's routes, outside `/v1`) are ../sourcemaps.ts; this is the command around them.
 */

export const sourcemaps: Family = {
  groups: { sourcemaps: "source maps of a build made elsewhere (the service's own builds keep theirs)" },
  commands: [
    {
      name: 'sourcemaps upload',
      args: '<dir>',
      description: 'upload the *.map files under a build folder (and the debug ids and map references of its JS files)',
      project: true,
      options: () => [new Option('--url-prefix <prefix>', 'where the folder is served: ~/ (any host, the root; default) or e.g. ~/static/js').default('~/')],
      async run({ client, out, project: projectOf }, [dir], opts) {
        const project = projectOf();
        let collected: Awaited<ReturnType<typeof collectSourceMaps>>;
        try {
          collected = await collectSourceMaps(dir!);
        } catch (err) {
          throw new CliExit(EXIT.usage, (err as Error).message);
        }
        for (const s of collected.skipped) out.note(`skipped ${s}`);
        if (!collected.maps.length) throw new CliExit(EXIT.failed, `no source map under ${dir} (*.map files, or JS with an inline sourceMappingURL)`);
        const withId = collected.maps.filter((m) => m.debugId).length + collected.sources.filter((s) => s.debugId).length;
        const spin = out.spinner(`uploading ${collected.maps.length} source map${collected.maps.length === 1 ? '' : 's'}`);
        let answer: Awaited<ReturnType<typeof uploadBundle>>;
        try {
          answer = await uploadBundle(client, project, bundleOf(collected, { project, urlPrefix: opts.urlPrefix as string | undefined }));
        } finally {
          spin.stop();
        }
        if (out.json) return out.data(answer);
        if (answer.state !== 'ok') throw new CliExit(EXIT.failed, `the service did not keep the maps (${answer.state}): ${answer.detail ?? ''}`);
        out.print(`${out.paint('ok', 'Uploaded:')} ${answer.detail ?? ''}`);
        if (!withId) out.note('none of these files carries a debug id: maps are found by the path a site serves the file at');
      },
    },
  ],
};
