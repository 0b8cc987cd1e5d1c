package cloudtest

import (
	"context"

	gcs "cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/api/option"
)

// S3Client returns an S3 client for the endpoint with the environment's credentials.
func S3Client(ctx context.Context, endpoint string) (*s3.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"))
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	}), nil
}

func makeS3Bucket(ctx context.Context, endpoint string) error {
	c, err := S3Client(ctx, endpoint)
	if err != nil {
		return err
	}
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(Bucket)})
	return ignoreExists(err, "BucketAlreadyOwnedByYou", "BucketAlreadyExists")
}

func makeGCSBucket(ctx context.Context, endpoint string) error {
	c, err := gcs.NewClient(ctx, option.WithoutAuthentication(), option.WithEndpoint("http://"+trimHTTP(endpoint)+"/storage/v1/"))
	if err != nil {
		return err
	}
	defer c.Close()
	err = c.Bucket(Bucket).Create(ctx, "skiplake-test-project", nil)
	return ignoreExists(err, "409", "already")
}

func makeAzureContainer(ctx context.Context, endpoint string) error {
	cred, err := azblob.NewSharedKeyCredential(AzuriteAccount, AzuriteKey)
	if err != nil {
		return err
	}
	c, err := azblob.NewClientWithSharedKeyCredential("http://"+trimHTTP(endpoint)+"/"+AzuriteAccount+"/", cred, nil)
	if err != nil {
		return err
	}
	_, err = c.CreateContainer(ctx, Bucket, nil)
	return ignoreExists(err, "ContainerAlreadyExists")
}

func trimHTTP(s string) string {
	if len(s) > 7 && s[:7] == "http://" {
		return s[7:]
	}
	return s
}
