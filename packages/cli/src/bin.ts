#!/usr/bin/env node
/** The `kubeloop` executable: see {@link runCli}. */
import { runCli } from './cli.js';

process.exitCode = await runCli(process.argv.slice(2));
