#!/usr/bin/env node
/** The `create-kubeloop` executable (`pnpm create kubeloop <name>`): see {@link runCreate}. */
import { runCreate } from './cli.js';

process.exitCode = await runCreate(process.argv.slice(2));
