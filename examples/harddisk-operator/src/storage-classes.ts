/** A user service the reconciler gets from the DI container: what each storage class means. */
import { injectable } from 'tsyringe';

@injectable()
export class StorageClassCatalog {
  private readonly classes = new Map<string, { medium: string; iops: string }>([
    ['standard', { medium: 'hdd', iops: '500' }],
    ['fast', { medium: 'ssd', iops: '16000' }],
  ]);

  /** The names of the known classes. */
  names(): string[] {
    return [...this.classes.keys()];
  }

  /** The description of a class, or undefined for an unknown one. */
  describe(name: string): { medium: string; iops: string } | undefined {
    return this.classes.get(name);
  }
}
